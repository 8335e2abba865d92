"""``OpenAIResponsesModel``: the OpenAI Responses API (``POST /responses``), blocking and streaming.

It joins the pure Responses codec and stream decoder to the shared ``OpenAIHttpClient`` (transport,
retries, timeouts, typed HTTP errors). It also implements the ``ChatModel`` protocol, so an agent can use it
in place of ``OpenAIChatModel``. It holds no protocol logic of its own: mappings live in ``responses_codec``
and ``responses_stream``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import Any

from ...http.retry import RetryPolicy
from ...http.timeouts import Timeout
from ...http.transport import HttpTransport
from ...model.protocol import RequestLike
from ...model.request import ChatRequest, parameters_from
from ...model.response import ChatResponse
from ...model.stream import ModelStream
from .client import OnRetry, OpenAIHttpClient, check_sdk_keywords, redact_url
from .http_options import call_headers
from .responses_codec import (
    IncompletePolicy,
    check_response,
    decode_response,
    encode_request,
    request_from_chat,
)
from .responses_stream import ResponsesStreamDecoder
from .responses_types import InputItem, ResponsesRequest, ResponsesResponse, check_request_fields

__all__ = ["OpenAIResponsesModel"]

_PATH = "/responses"

ResponsesRequestLike = ResponsesRequest | str | Sequence[InputItem]


def _to_chat(response: ResponsesResponse) -> ChatResponse:
    return response.to_chat_response()


class OpenAIResponsesModel:
    """A model served by an OpenAI-compatible ``/responses`` endpoint.

    ``OpenAIResponsesModel(base_url=…, api_key=…, model=…, **defaults)``: ``defaults`` are
    ``ResponsesRequest`` fields (``temperature``, ``reasoning``, ``store``, ``extra_body``…) used when a
    request leaves them unset; call keywords override both. ``custom_parameters`` (as for
    ``OpenAIChatModel``) join ``extra_body``: extra top-level body fields that standard fields win over.
    ``on_incomplete`` decides what an ``incomplete`` response does: ``"raise"`` (default) raises
    ``IncompleteResponseError`` whose ``partial`` holds the result; ``"return"`` returns it (its ``status`` /
    ``finish_reason`` say why it stopped).

    The HTTP options are those of ``OpenAIChatModel``: ``custom_headers`` (sent after the standard ones),
    ``transport``, ``timeout`` / ``connect_timeout`` / ``read_timeout``, ``retry``, ``sleep``, ``on_retry``,
    ``max_event_bytes``. The API key is sent as ``Authorization: Bearer …`` when set and never shown in a
    repr, an error or an event; ``base_url`` and ``api_key`` left out are read from the environment as for
    ``OpenAIChatModel`` (``OPENAI_API_KEY`` only for OpenAI's own base URL or one from ``OPENAI_BASE_URL``).
    One pooled HTTP session per model and event loop, opened on first use: close it with
    ``async with model:`` or ``await model.aclose()``.

    >>> OpenAIResponsesModel(base_url="http://127.0.0.1:8000/v1", api_key="sk-secret", model="gpt-5-mini")
    OpenAIResponsesModel(base_url='http://127.0.0.1:8000/v1', model='gpt-5-mini', api_key=<set>)

    Usage::

        async with OpenAIResponsesModel(api_key=key, model="gpt-5-mini") as model:
            response = await model.create("Say hi", max_output_tokens=50)
            async with model.create_stream("Tell a story") as stream:
                async for event in stream:
                    ...
    """

    __slots__ = ("_client", "_defaults", "_on_incomplete")

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        custom_parameters: Mapping[str, Any] | None = None,
        custom_headers: Mapping[str, str] | None = None,
        transport: HttpTransport | None = None,
        timeout: Timeout | None = None,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        on_retry: OnRetry | None = None,
        on_incomplete: IncompletePolicy = "raise",
        max_event_bytes: int | None = None,
        **defaults: Any,
    ) -> None:
        check_sdk_keywords("OpenAIResponsesModel", defaults)
        if on_incomplete not in ("raise", "return"):
            raise ValueError(f"on_incomplete must be 'raise' or 'return', not {on_incomplete!r}")
        check_request_fields(defaults)
        if model is not None:
            defaults["model"] = model
        if custom_parameters:
            defaults["extra_body"] = {**custom_parameters, **(defaults.get("extra_body") or {})}
        ResponsesRequest((), **defaults)  # a default of the wrong type fails here, not at the first call
        self._defaults: dict[str, Any] = defaults
        self._on_incomplete: IncompletePolicy = on_incomplete
        self._client = OpenAIHttpClient(
            base_url=base_url,
            api_key=api_key,
            headers=custom_headers,
            transport=transport,
            timeout=timeout,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retry=retry,
            sleep=sleep,
            on_retry=on_retry,
            max_event_bytes=max_event_bytes,
        )

    def __repr__(self) -> str:
        key = "<set>" if self._client.has_api_key else "None"
        base, model = redact_url(self._client.base_url), self._defaults.get("model")
        return f"OpenAIResponsesModel(base_url={base!r}, model={model!r}, api_key={key})"

    @property
    def model(self) -> str | None:
        """The default model name."""
        model = self._defaults.get("model")
        return None if model is None else str(model)

    @property
    def base_url(self) -> str:
        """Where requests go (credentials in the URL, if any, shown as ``***``)."""
        return redact_url(self._client.base_url)

    @property
    def defaults(self) -> Mapping[str, Any]:
        """The ``ResponsesRequest`` fields every request starts from (read-only view)."""
        return MappingProxyType(self._defaults)

    @property
    def client(self) -> OpenAIHttpClient:
        """The HTTP client (base URL, timeouts, retry policy)."""
        return self._client

    # --- the Responses API ------------------------------------------------------------------------------

    def build_request(self, request: ResponsesRequestLike, /, **overrides: Any) -> ResponsesRequest:
        """The request as it will be sent: the model's defaults fill unset fields, ``overrides`` win."""
        return ResponsesRequest.coerce(request).merged(self._defaults, overrides)

    async def create(
        self,
        request: ResponsesRequestLike,
        /,
        *,
        extra_headers: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> ResponsesResponse:
        """Send the request and return the whole response (``extra_headers``: HTTP headers for this call
        only, sent after the model's own).

        Raises the typed ``ModelError`` for HTTP failures, ``failed`` responses and error objects, and
        ``IncompleteResponseError`` for an ``incomplete`` response (unless ``on_incomplete="return"``).
        """
        headers = call_headers(extra_headers)
        body = encode_request(self.build_request(request, **overrides), stream=False)
        on_incomplete = self._on_incomplete

        def decode(payload: Any) -> ResponsesResponse:
            # Inside the retry loop: a 200 body with status "failed" and a retryable code is retried.
            return check_response(decode_response(payload), on_incomplete=on_incomplete)

        return await self._client.post_json(_PATH, body, decode=decode, headers=headers)

    def create_stream(
        self,
        request: ResponsesRequestLike,
        /,
        *,
        extra_headers: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> ModelStream[ResponsesResponse]:
        """Stream the response as model events ending with ``ModelCompleted(ResponsesResponse)``.

        The body is built now (bad input fails here); nothing is sent until the stream is entered or iterated.
        ``extra_headers`` as for ``create``.
        """
        headers = call_headers(extra_headers)
        body = encode_request(self.build_request(request, **overrides), stream=True)
        on_incomplete = self._on_incomplete

        def decoder() -> ResponsesStreamDecoder[ResponsesResponse]:
            return ResponsesStreamDecoder.for_responses(on_incomplete=on_incomplete)

        return ModelStream(lambda: self._client.stream(_PATH, body, decoder, headers))

    # --- the ChatModel protocol -------------------------------------------------------------------------

    def _chat_request(self, request: RequestLike, overrides: Mapping[str, Any]) -> ResponsesRequest:
        chat = ChatRequest.coerce(request)
        params = None
        if overrides:
            params = parameters_from(overrides, "chat parameter(s)")
        return request_from_chat(chat, params).merged(self._defaults)

    async def chat(
        self, request: RequestLike, /, *, extra_headers: Mapping[str, str] | None = None, **overrides: Any
    ) -> ChatResponse:
        """``ChatModel.chat``: the unified request sent to ``/responses``, the answer as a ``ChatResponse``.

        ``overrides`` are ``ChatParameters`` fields, ``extra_headers`` HTTP headers for this call only.
        Errors are those of ``create``; the ``partial`` of an ``IncompleteResponseError`` is a
        ``ChatResponse`` here.
        """
        headers = call_headers(extra_headers)
        body = encode_request(self._chat_request(request, overrides), stream=False)
        on_incomplete = self._on_incomplete

        def decode(payload: Any) -> ChatResponse:
            response = decode_response(payload)
            chat = response.to_chat_response()
            check_response(response, on_incomplete=on_incomplete, partial=chat)
            return chat

        return await self._client.post_json(_PATH, body, decode=decode, headers=headers)

    def stream(
        self, request: RequestLike, /, *, extra_headers: Mapping[str, str] | None = None, **overrides: Any
    ) -> ModelStream[ChatResponse]:
        """``ChatModel.stream``: model events ending with ``ModelCompleted(ChatResponse)``."""
        headers = call_headers(extra_headers)
        body = encode_request(self._chat_request(request, overrides), stream=True)
        on_incomplete = self._on_incomplete

        def decoder() -> ResponsesStreamDecoder[ChatResponse]:
            return ResponsesStreamDecoder(_to_chat, on_incomplete=on_incomplete)

        return ModelStream(lambda: self._client.stream(_PATH, body, decoder, headers))

    # --- lifecycle --------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Release the model's HTTP connections."""
        await self._client.aclose()

    async def __aenter__(self) -> OpenAIResponsesModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
