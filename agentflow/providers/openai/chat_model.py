"""``OpenAIChatModel``: the ``ChatModel`` for ``POST /chat/completions`` on OpenAI and compatible servers.

A thin assembly: parameters are merged (constructor defaults < request < call overrides), encoded by
``chat_codec``, sent by the shared ``OpenAIHttpClient``, and decoded by ``chat_codec`` (blocking) or
``ChatStreamDecoder`` (streaming). It holds no wire logic of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

import attrs

from ...http.retry import RetryPolicy
from ...http.timeouts import Timeout
from ...http.transport import HttpTransport
from ...model.messages import Message
from ...model.protocol import RequestLike
from ...model.request import ChatParameters, ChatRequest, coerce_messages, parameters_from
from ...model.response import ChatResponse
from ...model.stream import ModelStream
from .chat_codec import (
    MAX_TOKENS_FIELDS,
    MaxTokensField,
    decode_chat_response,
    encode_chat_body,
    encode_parameters,
)
from .chat_stream import ChatStreamDecoder
from .client import OnRetry, OpenAIHttpClient, check_sdk_keywords, redact_url
from .http_options import call_headers
from .think_tags import DEFAULT_THINK_TAGS, ThinkTags, check_think_tags

__all__ = ["OpenAIChatModel"]

_ENDPOINT = "/chat/completions"


class OpenAIChatModel:
    """A chat model speaking OpenAI Chat Completions, blocking (``chat``) and streaming (``stream``).

    ``OpenAIChatModel(base_url=…, api_key=…, model=…, **defaults)``: ``defaults`` are ``ChatParameters``
    fields (``temperature=0.2``, ``max_tokens=…``, ``tools=…``); ``custom_parameters`` (or ``extra_body``,
    the openai SDK's name) are extra top-level body fields (standard fields win over them);
    ``custom_headers`` are sent after the standard headers. ``connect_timeout`` / ``read_timeout``
    (seconds) adjust ``timeout`` (a ``Timeout``); ``retry`` is the ``RetryPolicy``; ``sleep`` (async) the
    back-off's wait; ``on_retry`` (a plain or an async function) hears of every retry.

    ``api_key`` is sent as ``Authorization: Bearer …`` when set, and never shown in a repr, an error or an
    event. Left out, it is read from ``OPENAI_API_KEY``, but only for OpenAI's own base URL or one that
    came from ``OPENAI_BASE_URL`` (which ``base_url`` left out is read from): a key from the environment
    never goes to a server you named yourself. ``api_key=""`` sends no key at all (see
    ``agentflow.providers.openai.environment``).

    Options for compatible servers (see docs/model/chat-completions.md):

    - ``stream_usage`` (default ``True``): streams ask for their token usage with
      ``stream_options: {"include_usage": true}``. Mistral, Databricks, Bedrock and older Azure API versions
      reject the field (400/422): ``False`` leaves it out (such a stream then reports usage only if the
      server sends it anyway).
    - ``max_tokens_field``: the one wire field that carries the output token limit, whichever of
      ``max_tokens`` / ``max_completion_tokens`` (an agent's ``max_output_tokens``) is set, the smaller when
      both are. ``"max_tokens"`` for Ollama, LM Studio, llama-cpp-python and older vLLM, which ignore or
      reject ``max_completion_tokens``; ``None`` (the default) sends each under its own name.
    - ``max_event_bytes``: the largest server-sent event a stream accepts (default 8 MiB); a larger one
      fails with ``ProtocolError`` rather than exhausting memory.
    - ``think_tags`` (default ``("<think>", "</think>")``): servers without a reasoning parser (vLLM, SGLang,
      older Ollama, LM Studio, llama.cpp, DeepSeek-R1 / QwQ / Qwen3 deployments) send the reasoning inline,
      as a ``<think>…</think>`` block at the start of ``content``. An answer that *opens* with the open tag
      (after optional whitespace) has the block split off as its reasoning (``ReasoningDelta`` in a stream,
      ``message.reasoning``), the line breaks after the close tag dropped; a block never closed was all
      reasoning. Text that merely mentions a tag is left alone. Another pair for other tags;
      ``("", "</think>")`` when the chat template opens the block in the prompt (DeepSeek-R1 distills: the
      content starts inside it); ``None`` keeps content exactly as sent (e.g. for MiniMax-M2, which wants its
      ``<think>`` blocks back in the history).

    One pooled HTTP session per model and event loop, opened on first use: close it with
    ``async with model:`` or ``await model.aclose()``.

    >>> OpenAIChatModel(base_url="http://127.0.0.1:8000", api_key="sk-secret", model="gpt-4o-mini")
    OpenAIChatModel(base_url='http://127.0.0.1:8000/v1', model='gpt-4o-mini', api_key=<set>)
    """

    __slots__ = (
        "_client",
        "_decode",
        "_decoder",
        "_defaults",
        "_last_encoding",
        "_last_merge",
        "_max_tokens_field",
        "_stream_usage",
        "_think_tags",
    )

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
        stream_usage: bool = True,
        max_tokens_field: MaxTokensField | None = None,
        max_event_bytes: int | None = None,
        think_tags: ThinkTags | None = DEFAULT_THINK_TAGS,
        **defaults: Any,
    ) -> None:
        check_sdk_keywords("OpenAIChatModel", defaults)
        _check_chat_options(stream_usage=stream_usage, max_tokens_field=max_tokens_field)
        self._stream_usage = stream_usage
        self._max_tokens_field = max_tokens_field
        tags = self._think_tags = check_think_tags(think_tags)
        # Bound once: ``post_json`` and ``stream`` take a one-argument decoder and a decoder factory.
        self._decode: Callable[[Any], ChatResponse] = functools.partial(decode_chat_response, think_tags=tags)
        self._decoder: Callable[[], ChatStreamDecoder] = functools.partial(ChatStreamDecoder, think_tags=tags)
        params = parameters_from(defaults, "OpenAIChatModel keyword(s)", per_call=False)
        # ``extra_body=`` (in ``params.custom``) joins ``custom_parameters``; its keys win, as on Responses.
        custom = {**(custom_parameters or {}), **params.custom}
        self._defaults = attrs.evolve(params, model=model, custom=custom)
        self._last_merge: tuple[ChatParameters, ChatParameters] | None = None
        self._last_encoding: tuple[ChatParameters, dict[str, Any]] | None = None
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
        client = self._client
        key = "<set>" if client.has_api_key else "None"
        base = redact_url(client.base_url)
        return f"OpenAIChatModel(base_url={base!r}, model={self._defaults.model!r}, api_key={key})"

    @property
    def model(self) -> str | None:
        """The default model name (what a request without its own ``model`` asks for)."""
        return self._defaults.model

    @property
    def base_url(self) -> str:
        """Where requests go (credentials in the URL, if any, shown as ``***``)."""
        return redact_url(self._client.base_url)

    @property
    def defaults(self) -> ChatParameters:
        """The parameters every request starts from (the request's own, then call overrides, win)."""
        return self._defaults

    @property
    def stream_usage(self) -> bool:
        """Whether streams ask for their token usage (``stream_options.include_usage``)."""
        return self._stream_usage

    @property
    def max_tokens_field(self) -> MaxTokensField | None:
        """The wire field that carries the output token limit (``None``: each limit under its own name)."""
        return self._max_tokens_field

    @property
    def think_tags(self) -> ThinkTags | None:
        """The ``(open, close)`` tags of an inline think block split off as reasoning, or ``None``."""
        return self._think_tags

    @property
    def client(self) -> OpenAIHttpClient:
        """The HTTP client (base URL, timeouts, retry policy)."""
        return self._client

    def _request(self, request: RequestLike, overrides: Mapping[str, Any]) -> ChatRequest:
        return ChatRequest(*self._merge(request, overrides))

    def _merge(
        self, request: RequestLike, overrides: Mapping[str, Any]
    ) -> tuple[tuple[Message, ...], ChatParameters]:
        """The messages and the merged parameters of one call (what ``_request`` makes a request of)."""
        if not isinstance(request, ChatRequest):
            # A plain sequence of messages sets no parameters: merged onto the defaults, they are the
            # defaults themselves (``merged`` returns ``self`` for an override that sets nothing).
            messages = coerce_messages(request)
            params = self._defaults
        else:
            messages = request.messages
            requested = request.parameters
            last = self._last_merge
            if last is not None and last[0] is requested and not requested.custom:
                params = last[1]
            else:
                params = self._defaults.merged(requested)
                if not requested.custom:
                    # Reused while the same parameters come again (an agent sends one object on every
                    # call). Only without ``custom``: merging copies that mutable map, and a copy must be
                    # taken anew.
                    self._last_merge = (requested, params)
        if overrides:
            params = params.merged(parameters_from(overrides, "parameter override(s)"))
        return messages, params

    def _encode(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        return self._body(request.messages, request.parameters, stream=stream)

    def _body(self, messages: tuple[Message, ...], params: ChatParameters, *, stream: bool) -> dict[str, Any]:
        last = self._last_encoding
        if last is not None and last[0] is params:
            fields = last[1]
        else:
            fields = encode_parameters(params, max_tokens_field=self._max_tokens_field)
            if not params.custom and params.response_format is None:
                # Reused while the same parameters object comes again (``_merge`` hands an agent's calls
                # one). Not with ``custom`` or ``response_format``: mutable maps, read anew every time.
                # The fields are only ever serialised, never changed, so bodies may share them.
                self._last_encoding = (params, fields)
        return encode_chat_body(
            messages,
            params,
            stream=stream,
            parameters=fields,
            stream_usage=self._stream_usage,
            max_tokens_field=self._max_tokens_field,
        )

    async def chat(
        self, request: RequestLike, /, *, extra_headers: Mapping[str, str] | None = None, **overrides: Any
    ) -> ChatResponse:
        """Send the request and return the whole response (retried per the policy).

        ``overrides`` are ``ChatParameters`` fields for this call only, e.g. ``temperature=0``, and
        ``extra_body={...}`` for provider-specific body fields (``ChatParameters.custom``).
        ``extra_headers`` are HTTP headers for this call only (a request id, a trace header, a gateway's
        per-user key), sent after the model's own.
        """
        headers = call_headers(extra_headers)
        messages, params = self._merge(request, overrides)
        body = self._body(messages, params, stream=False)
        # Decoded inside the retry loop: a 200 body that carries a retryable error is retried.
        return await self._client.post_json(_ENDPOINT, body, decode=self._decode, headers=headers)

    def stream(
        self, request: RequestLike, /, *, extra_headers: Mapping[str, str] | None = None, **overrides: Any
    ) -> ModelStream[ChatResponse]:
        """Stream the response: ``TextDelta``/``ReasoningDelta``/``RefusalDelta`` as they arrive, tool-call
        events, ``UsageReported``, ``ModelRetry`` for retries before the first event, and finally
        ``ModelCompleted(ChatResponse)``. Nothing is sent until the stream is entered or iterated; a bad
        request (no model name…) fails here, at once. ``extra_headers`` as for ``chat``.
        """
        headers = call_headers(extra_headers)
        messages, params = self._merge(request, overrides)
        body = self._body(messages, params, stream=True)
        client = self._client
        decoder = self._decoder
        return ModelStream(lambda: client.stream(_ENDPOINT, body, decoder, headers))

    async def aclose(self) -> None:
        """Release the model's HTTP connections. The model reconnects if it is used again."""
        await self._client.aclose()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _check_chat_options(*, stream_usage: object, max_tokens_field: object) -> None:
    """Raise ``TypeError`` / ``ValueError`` for a Chat option of the wrong type or value, at construction."""
    if not isinstance(stream_usage, bool):
        raise TypeError(f"stream_usage must be True or False, got {type(stream_usage).__name__}")
    if max_tokens_field is not None and max_tokens_field not in MAX_TOKENS_FIELDS:
        raise ValueError(
            f"max_tokens_field must be {' or '.join(map(repr, MAX_TOKENS_FIELDS))} (or None to send each "
            f"limit under its own name), got {max_tokens_field!r}"
        )
