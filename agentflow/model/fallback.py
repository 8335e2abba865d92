"""Falling back to another model when one fails: which failures another model may fix, the error raised when
every model failed, the chain that tries models in order, and ``FallbackChatModel`` built on it.

``FallbackChain`` knows nothing of requests or protocols: it is given the members and, per call, how to call
one (a blocking call) or open one (a stream). ``agentflow.agent.fallback_client.FallbackModelClient`` (agent
prompts) and ``FallbackChatModel`` (``ChatModel`` calls) are both thin layers over it. Nothing here runs
unless a member's call failed: the first member is called as it would be without a fallback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Generic, Self, TypeAlias, TypeVar

import attrs

from .errors import (
    AuthenticationError,
    BadRequestError,
    ContentFilterError,
    IncompleteResponseError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    NotFoundError,
    ProtocolError,
    RateLimitError,
    RedirectError,
    ResponseNotFinishedError,
    ServerError,
)
from .events import ModelCompleted, ModelEvent, ModelRetry, UsageReported
from .protocol import ChatModel, RequestLike
from .request import ChatRequest
from .response import ChatResponse, TokenUsage
from .retries import retry_listener
from .stream import ModelStream

__all__ = [
    "AllModelsFailedError",
    "FallbackChain",
    "FallbackChatModel",
    "FallbackOn",
    "may_succeed_elsewhere",
]

_log = logging.getLogger("agentflow")

M = TypeVar("M")
R = TypeVar("R")

FallbackOn: TypeAlias = type[Exception] | tuple[type[Exception], ...] | Callable[[Exception], bool]
"""When to try the next model: exception types, or a predicate of the exception (``fallback_on=``)."""

_ELSEWHERE: tuple[type[ModelError], ...] = (
    RateLimitError,  # the quota, the load: this provider's (after its own retries)
    ServerError,  # 5xx, 408, 409
    ModelTimeoutError,
    ModelConnectionError,  # down, unreachable, a certificate or proxy of its own
    AuthenticationError,  # this provider's key or permissions
    NotFoundError,  # this server lacks the model (or the endpoint)
    RedirectError,  # this server moved
    ProtocolError,  # this server answered something that is not the protocol
)
_SAME_EVERYWHERE: tuple[type[ModelError], ...] = (
    ContentFilterError,  # a policy decision: not something to route around silently
    IncompleteResponseError,  # the caller's max_output_tokens
    ResponseNotFinishedError,  # a background response: there is no answer yet
)
# How servers say the prompt does not fit the model's context: OpenAI's and vLLM's "maximum context length",
# Mistral's "too large for model with … maximum context length", llama.cpp's "exceeds the available context
# size", Anthropic-style "prompt is too long", Gemini's "input token count exceeds the maximum".
_CONTEXT_TOO_LONG = (
    r"context[ _-]?(length|window|size)|prompt is too long|too many tokens|token count exceeds|"
    r"reduce the length of the (messages|prompt|input)"
)


def may_succeed_elsewhere(error: Exception) -> bool:
    """Whether another model (or provider) may succeed where this error's failed: the default ``fallback_on``.

    True for a failure of the provider or of this model: rate limits and quotas (``RateLimitError``, raised
    once the model's own ``RetryPolicy`` gave up), server errors (5xx, 408, 409), timeouts, connection
    failures, this provider's credentials (401, 403), an unknown model (404), a redirect, an answer that is
    not the protocol; and a ``BadRequestError`` saying that the prompt is too long for the model's context
    (``context_length_exceeded``, HTTP 413, or words to that effect), which a model with a larger context
    window may take. Also any other ``ModelError`` the server marked retryable.

    False for what would fail the same way on any model, or is the caller's: any other bad request (a tool
    schema or parameter the server rejects), a content filter's decision, an answer cut at
    ``max_output_tokens``, a background response not finished yet, and any exception that is not a
    ``ModelError`` (a ``TypeError`` for a bad prompt, a bug). Cancellation is never a failure to fall back
    on: it is not an ``Exception`` and always propagates.

    >>> may_succeed_elsewhere(ServerError("HTTP 503: overloaded", status=503))
    True
    >>> may_succeed_elsewhere(BadRequestError("HTTP 400: tools.0.parameters: invalid schema", status=400))
    False
    >>> may_succeed_elsewhere(BadRequestError("HTTP 400: ...", status=400, code="context_length_exceeded"))
    True
    """
    if not isinstance(error, ModelError):
        return False
    if isinstance(
        error, AllModelsFailedError
    ):  # a nested fallback's: this one's next model may fix any of them
        return any(may_succeed_elsewhere(inner) for inner in error.exceptions)
    if isinstance(error, _ELSEWHERE):
        return True
    if isinstance(error, BadRequestError):
        return (
            error.code == "context_length_exceeded"
            or error.status == 413
            or re.search(_CONTEXT_TOO_LONG, error.message, re.IGNORECASE) is not None
        )
    if isinstance(error, _SAME_EVERYWHERE):
        return False
    return error.retryable


def fallback_predicate(fallback_on: FallbackOn | None) -> Callable[[Exception], bool]:
    """``fallback_on`` as a predicate (``None``: ``may_succeed_elsewhere``), checked.

    A nested fallback's ``AllModelsFailedError`` falls back when it does itself or when any of its errors
    would, whatever ``fallback_on`` is (a tuple of types names its members' types, not the group's).

    >>> fallback_predicate(ServerError)(ServerError("HTTP 500")), fallback_predicate(None)(ValueError("x"))
    (True, False)
    >>> nested = AllModelsFailedError("all failed", [ServerError("HTTP 500"), ServerError("HTTP 502")])
    >>> fallback_predicate(ServerError)(nested), fallback_predicate(RateLimitError)(nested)
    (True, False)
    """
    if fallback_on is None:
        return may_succeed_elsewhere
    if isinstance(fallback_on, type) and issubclass(fallback_on, Exception):
        fallback_on = (fallback_on,)
    if isinstance(fallback_on, tuple):
        for kind in fallback_on:
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                raise TypeError(f"fallback_on takes Exception subclasses, got {kind!r}")
        kinds = fallback_on
        return _unwrapping(lambda error: isinstance(error, kinds))
    if isinstance(fallback_on, type) or not callable(fallback_on):
        raise TypeError(
            "fallback_on takes an exception type, a tuple of them, or a function of the exception returning "
            f"True to try the next model, got {fallback_on!r}"
        )
    return _unwrapping(fallback_on)


def _unwrapping(predicate: Callable[[Exception], bool]) -> Callable[[Exception], bool]:
    """``predicate``, also true for an ``AllModelsFailedError`` with a member (at any depth) it is true for.
    Called only when a member failed: nothing on the way of a call that succeeds."""

    def check(error: Exception) -> bool:
        if predicate(error):
            return True
        return isinstance(error, AllModelsFailedError) and any(check(inner) for inner in error.exceptions)

    return check


def _failure_text(error: Exception) -> str:
    """A member's failure as the messages show it: a ``ModelError``'s message (already without credentials),
    else the exception's type and text, any URL in it without query or user info."""
    if isinstance(error, ModelError):
        return error.message
    from ..http.failures import scrub  # only for an exception a fallback_on= of your own let through

    text = scrub(str(error))
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class AllModelsFailedError(ModelError, ExceptionGroup[Exception]):
    """Every model of a fallback failed: ``exceptions`` holds each one's error, in the order they were tried,
    and ``models`` names them (as ``ModelRetry`` reasons and messages do).

    Both a ``ModelError`` (``except ModelError`` catches it; a run fails with it as with any model error) and
    an ``ExceptionGroup`` (``except* RateLimitError`` picks the rate-limited members out; a traceback shows
    every member's error). ``status`` is the members' common HTTP status, ``None`` when they differ;
    ``retryable`` is true when any member's error was. The message is built from the members' messages,
    which never include credentials.
    """

    models: tuple[str, ...]

    def __new__(cls, message: str, errors: Sequence[Exception], models: Sequence[str] = ()) -> Self:
        return super().__new__(cls, message, errors)

    def __init__(self, message: str, errors: Sequence[Exception], models: Sequence[str] = ()) -> None:
        statuses = {getattr(e, "status", None) for e in errors}
        ModelError.__init__(
            self,
            message,
            status=statuses.pop() if len(statuses) == 1 else None,
            retryable=any(getattr(e, "retryable", False) is True for e in errors),
        )
        self.models = tuple(models)

    # ``BaseExceptionGroup.message`` is read-only; a ``ModelError``'s may be extended (``extend_message``).
    @property
    def message(self) -> str:
        """The error's message (the group's own, without its members' tracebacks)."""
        text: str = self.__dict__["_message"]
        return text

    @message.setter
    def message(self, value: str) -> None:
        self.__dict__["_message"] = value

    def __str__(self) -> str:
        return self.message

    def derive(self, excs: Sequence[Exception]) -> AllModelsFailedError:  # type: ignore[override]
        """The same error over some of its members (what ``except*`` and ``split`` build)."""
        kept = [self.models[i] for i, e in enumerate(self.exceptions) if e in excs and i < len(self.models)]
        return AllModelsFailedError(self.message, excs, kept if len(kept) == len(excs) else ())

    def __reduce__(self) -> tuple[Any, ...]:
        # The group's ``args`` are not the constructor's (``ModelError`` sets them to the message alone).
        return (type(self), (self.message, list(self.exceptions), self.models), dict(self.__dict__))


@attrs.frozen
class _Failure:
    label: str
    error: Exception


def _label(member: object, index: int, count: int) -> str:
    """How messages name a member: its model name (a client's ``model_name``, a model's ``model``), else
    its type; and its place in the chain."""
    name = getattr(member, "model_name", None)
    if not isinstance(name, str):
        name = getattr(member, "model", None)
    shown = repr(name) if isinstance(name, str) else type(member).__name__
    return f"{shown} ({index + 1} of {count})"


class FallbackChain(Generic[M]):
    """Members tried in order: the next one when a call fails in a way ``falls_back`` accepts.

    ``call`` and ``open_stream`` callables receive ``(member, index)``; the caller makes the first member's
    call itself (no cost beyond it when that succeeds) and hands its failure, or its stream, over here.
    """

    __slots__ = ("_falls_back", "_labels", "members")

    def __init__(self, members: Sequence[M], falls_back: Callable[[Exception], bool]) -> None:
        self.members = tuple(members)
        self._falls_back = falls_back
        count = len(self.members)
        self._labels = tuple(_label(member, i, count) for i, member in enumerate(self.members))

    def falls_back(self, error: Exception) -> bool:
        """Whether the next member is tried after ``error``."""
        return self._falls_back(error)

    def _announce(self, failures: list[_Failure], index: int) -> ModelRetry:
        """The ``ModelRetry`` saying member ``index`` is tried next, after the last failure (logged too)."""
        failed = failures[-1]
        text = _failure_text(failed.error)
        _log.warning("model %s failed (%s); falling back to %s", failed.label, text, self._labels[index])
        return ModelRetry(
            attempt=index + 1,
            max_attempts=len(self.members),
            delay=0.0,
            reason=f"{text}; falling back from {failed.label} to {self._labels[index]}",
        )

    def _gave_up(self, failures: list[_Failure]) -> AllModelsFailedError:
        count = len(failures)
        parts = ", then ".join(f"{f.label} with {_failure_text(f.error)}" for f in failures)
        return AllModelsFailedError(
            f"all {count} models failed: {parts}",
            [f.error for f in failures],
            [f.label for f in failures],
        )

    def _note(self, error: BaseException, failures: list[_Failure]) -> None:
        """Note on ``error`` (a later member's, not one to fall back on) what failed before it."""
        for failed in failures:
            error.add_note(f"tried after {failed.label} failed: {_failure_text(failed.error)}")

    async def rest(self, first: Exception, call: Callable[[M, int], Awaitable[R]]) -> R:
        """After the first member's call failed with ``first`` (one ``falls_back`` accepts), each later
        member's in turn; every fallback is announced to the context's ``retry_listener`` (an agent run
        publishes it as ``ModelRetry``). Raises ``AllModelsFailedError`` when the last one fails too."""
        failures = [_Failure(self._labels[0], first)]
        for index in range(1, len(self.members)):
            listener = retry_listener.get()
            announced = self._announce(failures, index)
            if listener is not None:
                await listener(announced)
            try:
                return await call(self.members[index], index)
            except Exception as exc:
                if not self._falls_back(exc):
                    self._note(exc, failures)
                    raise
                failures.append(_Failure(self._labels[index], exc))
        raise self._gave_up(failures)

    def stream(
        self, first: ModelStream[R], open_stream: Callable[[M, int], ModelStream[R]]
    ) -> ModelStream[R]:
        """``first`` (the first member's stream), or, when it fails before any part of its answer, the next
        member's, and so on: a ``ModelRetry`` announces each fallback in the stream.

        Only ``ModelRetry`` and ``UsageReported`` events may come before a fallback; the first other event
        (a delta, a tool call, a completion) is part of the answer, published by the consumer as it came:
        from then on the stream is passed through and its failure propagates, since a half-streamed answer
        cannot be taken back.
        """

        async def events() -> AsyncGenerator[ModelEvent, None]:
            failures: list[_Failure] = []
            billed: TokenUsage | None = (
                None  # what members that failed had reported using: spent all the same
            )
            for index in range(len(self.members)):
                if index:
                    yield self._announce(failures, index)
                    try:
                        current = open_stream(self.members[index], index)
                    except Exception as exc:  # a prompt this member cannot take (checked before sending)
                        self._note(exc, failures)
                        raise
                else:
                    current = first
                reported: TokenUsage | None = None
                async with current:
                    while True:
                        try:
                            event = await current.__anext__()
                        except StopAsyncIteration:
                            return
                        except Exception as exc:
                            if not self._falls_back(exc):
                                self._note(exc, failures)
                                raise
                            failures.append(_Failure(self._labels[index], exc))
                            if reported is not None:
                                billed = reported if billed is None else billed + reported
                            break
                        if type(event) is UsageReported:
                            reported = event.usage  # cumulative: the latest report is the call's so far
                        yield event if billed is None else _with_billed(event, billed)
                        if type(event) is not ModelRetry and type(event) is not UsageReported:
                            # Part of the answer has been published: no fallback from here on.
                            if billed is None:
                                async for event in current:
                                    yield event
                            else:
                                async for event in current:
                                    yield _with_billed(event, billed)
                            return
            raise self._gave_up(failures)

        return ModelStream(events)

    async def aclose(self) -> None:
        """Close every member (each one, even when closing another fails)."""
        errors: list[Exception] = []
        for member in self.members:
            try:
                await member.aclose()  # type: ignore[attr-defined]
            except Exception as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ExceptionGroup("closing the fallback's models failed", errors)


def _with_billed(event: ModelEvent, billed: TokenUsage) -> ModelEvent:
    """``event`` of a member called after others failed, its usage counting what they had reported: a usage
    report (cumulative, as the call's) or the completion's response."""
    if type(event) is UsageReported:
        return UsageReported(billed + event.usage)
    if isinstance(event, ModelCompleted):
        usage = getattr(event.response, "usage", None)
        if isinstance(usage, TokenUsage) and attrs.has(type(event.response)):
            return attrs.evolve(event, response=attrs.evolve(event.response, usage=billed + usage))
    return event


def _later_request(request: RequestLike, overrides: dict[str, Any], member: ChatModel) -> RequestLike:
    """The request for a fallback member: without the model name asked of the first member when this member
    names a model of its own (``model=``)."""
    if not isinstance(getattr(member, "model", None), str):
        return request
    overrides.pop("model", None)
    if isinstance(request, ChatRequest) and request.parameters.model is not None:
        return ChatRequest(request.messages, attrs.evolve(request.parameters, model=None))
    return request


class FallbackChatModel:
    """A ``ChatModel`` that sends a call to ``primary`` and, when it fails in a way another model may fix,
    to each of ``fallbacks`` in turn (``model.chat(...)``, ``model.stream(...)``).

    ``fallback_on``: exception types, or a predicate of the exception, to fall back on; by default
    ``may_succeed_elsewhere``. A stream falls back only before any part of its answer came. A fallback model
    that names a model of its own (``model=``) is asked for it, not for the model the call named. When every
    model fails, ``AllModelsFailedError`` holds each one's error. For agents, prefer
    ``agentflow.FallbackModelClient``, which also takes ``OpenAIResponsesModel`` members over Responses.

    >>> from agentflow.testing.fake import FakeChatModel
    >>> FallbackChatModel(FakeChatModel([]), FakeChatModel([])).model is None
    True
    """

    __slots__ = ("_chain", "_primary")

    def __init__(
        self, primary: ChatModel, *fallbacks: ChatModel, fallback_on: FallbackOn | None = None
    ) -> None:
        members = (primary, *fallbacks)
        for member in members:
            if not isinstance(member, ChatModel):
                raise TypeError(f"FallbackChatModel takes ChatModel values, got {type(member).__name__}")
        self._primary = primary
        self._chain: FallbackChain[ChatModel] = FallbackChain(members, fallback_predicate(fallback_on))

    def __repr__(self) -> str:
        return f"FallbackChatModel({', '.join(map(repr, self._chain.members))})"

    @property
    def models(self) -> tuple[ChatModel, ...]:
        """The models, in the order they are tried."""
        return self._chain.members

    @property
    def model(self) -> str | None:
        """The first model's default model name (``None`` when it names none)."""
        name = getattr(self._primary, "model", None)
        return name if isinstance(name, str) else None

    async def chat(self, request: RequestLike, /, **overrides: Any) -> ChatResponse:
        """``primary.chat(...)``, else each fallback's in turn (see the class docstring)."""
        try:
            return await self._primary.chat(request, **overrides)
        except Exception as exc:
            if not self._chain.falls_back(exc):
                raise

            def call(member: ChatModel, _index: int) -> Awaitable[ChatResponse]:
                options = dict(overrides)
                return member.chat(_later_request(request, options, member), **options)

            return await self._chain.rest(exc, call)

    def stream(self, request: RequestLike, /, **overrides: Any) -> ModelStream[ChatResponse]:
        """``primary.stream(...)``, else, when it fails before any part of its answer, each fallback's."""

        def open_stream(member: ChatModel, _index: int) -> ModelStream[ChatResponse]:
            options = dict(overrides)
            return member.stream(_later_request(request, options, member), **options)

        return self._chain.stream(self._primary.stream(request, **overrides), open_stream)

    async def aclose(self) -> None:
        """Close every model."""
        await self._chain.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
