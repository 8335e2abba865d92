"""Pure codec of the OpenAI Responses protocol: typed request → wire body, wire body → typed response.

Also maps the unified ``ChatRequest`` onto a ``ResponsesRequest`` so ``OpenAIResponsesModel`` can serve the
``ChatModel`` protocol. Plain functions over dicts and attrs values: no I/O, no awaits, no HTTP.

>>> from agentflow import UserMessage
>>> encode_request(ResponsesRequest([UserMessage("hi")], model="gpt-5-mini"), stream=False)
{'model': 'gpt-5-mini', 'input': [{'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', \
'text': 'hi'}]}]}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import orjson

from ...model.errors import (
    IncompleteResponseError,
    ModelError,
    ProtocolError,
    ResponseNotFinishedError,
    error_from_payload,
)
from ...model.messages import (
    AiMessage,
    DeveloperMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ...model.request import ChatParameters, ChatRequest
from ...model.response import TokenUsage
from ...model.tools import ToolChoice, ToolSpec
from .chat_codec import has_tools, usage_count
from .responses_types import (
    InputItem,
    ResponsesRequest,
    ResponsesResponse,
    ToolChoiceLike,
    ToolLike,
    include_entries,
    merge_include,
)

__all__ = [
    "CALL_ITEMS",
    "MESSAGE_BREAK",
    "PENDING_STATUSES",
    "UNFINISHED_STATUSES",
    "IncompletePolicy",
    "build_response",
    "check_response",
    "decode_response",
    "decode_usage",
    "encode_input",
    "encode_request",
    "encode_tool",
    "encode_tool_choice",
    "error_from_event",
    "request_from_chat",
    "text_format",
    "tool_call_from_item",
]

IncompletePolicy = Literal["raise", "return"]
"""What an ``incomplete`` response does: raise ``IncompleteResponseError`` (default) or return it."""


# --- request ----------------------------------------------------------------------------------------------


def encode_request(request: ResponsesRequest, *, stream: bool) -> dict[str, Any]:
    """The JSON body of ``POST /responses``: ``extra_body`` first, then every set standard field over it.

    ``include`` is the exception: its entries are added to those of an ``extra_body`` ``include`` (each once),
    since both ask for extra output and neither should silently drop the other. So is ``text``: its keys are
    written over those of an ``extra_body`` ``text`` object, whose other settings stay (a ``format`` beside
    gpt-5's ``verbosity``).

    ``stream`` is written as ``true`` for a streaming call; for a blocking call an ``extra_body`` ``stream``
    is forced to ``false`` (a blocking call cannot read an event stream). Raises ``ValueError`` when no model
    is set and ``TypeError`` for an input item it cannot map.
    """
    body: dict[str, Any] = dict(request.extra_body)
    if not request.model:
        raise ValueError("no model set: pass model=... to OpenAIResponsesModel, the request, or the call")
    body["model"] = request.model
    body["input"] = encode_input(request.input)
    for name, encode in _OPTIONAL_FIELDS:
        value = getattr(request, name)
        if value is not None:
            body[name] = encode(value)
    if request.include is not None and "include" in request.extra_body:
        extra = include_entries(request.extra_body["include"], "extra_body['include']")
        body["include"] = list(merge_include(extra, request.include) or ())
    if request.text is not None and isinstance(extra_text := request.extra_body.get("text"), Mapping):
        body["text"] = {**extra_text, **request.text}
    if stream:
        body["stream"] = True
    elif "stream" in body:
        body["stream"] = False
    return body


def _same(value: Any) -> Any:
    return value


def _encode_tools(tools: Iterable[ToolLike]) -> list[dict[str, Any]]:
    return [encode_tool(tool) for tool in tools]


def encode_tool(tool: ToolLike) -> dict[str, Any]:
    """A flat function tool ``{"type": "function", "name", "description", "parameters", "strict"}``.

    ``description`` is sent when non-empty. ``strict`` is always sent, an unset one as ``false``: OpenAI's
    ``/responses`` treats a missing ``strict`` as ``true`` and would make every property required (so no
    default ever applies), while Chat Completions treats it as ``false`` — the same tool must mean the same
    on both. A function tool mapping in the Chat shape (``{"type": "function", "function": {…}}``) is
    flattened like a ``ToolSpec``; any other mapping (a hosted tool, or a flat function tool) is sent
    verbatim.
    """
    if (
        isinstance(tool, Mapping)
        and tool.get("type") == "function"
        and isinstance(tool.get("function"), Mapping)
    ):
        tool = ToolSpec.coerce(tool)
    if isinstance(tool, ToolSpec):
        wire: dict[str, Any] = {"type": "function", "name": tool.name}
        if tool.description:
            wire["description"] = tool.description
        wire["parameters"] = tool.parameters
        wire["strict"] = bool(tool.strict)
        return wire
    if isinstance(tool, Mapping):
        return dict(tool)
    raise TypeError(f"a tool must be a ToolSpec or a mapping, not {type(tool).__name__}")


def encode_tool_choice(choice: ToolChoiceLike) -> str | dict[str, Any]:
    """``auto``/``none``/``required`` as strings, a function as ``{"type": "function", "name": …}``.

    A function choice mapping in the Chat shape (``{"type": "function", "function": {"name": …}}``) is
    flattened, as ``/responses`` wants, and ``{"type": "auto"}`` and the like become their string; any other
    mapping (e.g. ``{"type": "web_search"}`` or ``{"type": "allowed_tools", …}``) is sent verbatim.

    >>> encode_tool_choice(ToolChoice.function("get_weather"))
    {'type': 'function', 'name': 'get_weather'}
    >>> encode_tool_choice({"type": "function", "function": {"name": "get_weather"}})
    {'type': 'function', 'name': 'get_weather'}
    """
    if isinstance(choice, Mapping):
        # One reading of the wire shapes for both protocols: ``ToolChoice.from_mapping``.
        typed = ToolChoice.from_mapping(choice)
        if typed is None:
            return dict(choice)
        choice = typed
    if isinstance(choice, ToolChoice):
        if choice.mode == "function":
            return {"type": "function", "name": choice.name}
        return choice.mode
    if isinstance(choice, str):
        return choice
    raise TypeError(f"tool_choice must be a ToolChoice, a string or a mapping, not {type(choice).__name__}")


_OPTIONAL_FIELDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("instructions", _same),
    ("tools", _encode_tools),
    ("tool_choice", encode_tool_choice),
    ("parallel_tool_calls", _same),
    ("temperature", _same),
    ("top_p", _same),
    ("max_output_tokens", _same),
    ("reasoning", dict),
    ("store", _same),
    ("user", _same),
    ("previous_response_id", _same),
    ("text", dict),
    ("include", list),
    ("metadata", dict),
    ("truncation", _same),
)
"""The optional ``ResponsesRequest`` fields in body order, each with its wire encoding (sent when set)."""


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


def _message(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content}


def _user_content(message: UserMessage) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [_text_part(message.content)]
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            parts.append(_text_part(part.text))
        elif isinstance(part, ImagePart):
            # /responses requires a detail level on input images; "auto" is the API's own default.
            parts.append({"type": "input_image", "image_url": part.url, "detail": part.detail or "auto"})
        else:
            raise TypeError(f"unsupported content part {type(part).__name__} in a user message")
    return parts


def encode_input(items: Iterable[InputItem]) -> list[Any]:
    """Input items on the wire.

    Messages become ``{"type": "message", "role", "content": [input_text | input_image…]}`` (assistant text as
    ``output_text``, a refusal as a ``refusal`` part); an assistant's tool calls become ``function_call``
    items and a tool result a ``function_call_output`` — a ``custom`` call (``ToolCall.kind``) a
    ``custom_tool_call`` item (its ``input``), and the result of one a ``custom_tool_call_output``. Mappings
    pass through verbatim. Chat provider fields (``provider_fields``) have no Responses form and are not sent.
    ``AiMessage.reasoning`` is not sent: reasoning is replayed through the raw reasoning items of an earlier
    response.
    """
    wire: list[Any] = []
    custom: set[str] | None = None  # the ids of the custom calls seen (their results go back in their shape)
    for item in items:
        if isinstance(item, Mapping):
            wire.append(item if isinstance(item, dict) else dict(item))
        elif isinstance(item, UserMessage):
            if item.name is not None:
                raise ValueError("the Responses API has no per-message name; drop UserMessage.name")
            wire.append(_message("user", _user_content(item)))
        elif isinstance(item, SystemMessage | DeveloperMessage):
            wire.append(_message(item.role, [_text_part(item.text)]))
        elif isinstance(item, AiMessage):
            content: list[dict[str, Any]] = []
            if item.text:
                content.append({"type": "output_text", "text": item.text})
            if item.refusal:
                content.append({"type": "refusal", "refusal": item.refusal})
            if content:
                wire.append(_message("assistant", content))
            for call in item.tool_calls:
                if call.kind == "custom":
                    wire.append(
                        {
                            "type": "custom_tool_call",
                            "call_id": call.id,
                            "name": call.name,
                            "input": call.arguments,
                        }
                    )
                    custom = custom or set()
                    custom.add(call.id)
                    continue
                wire.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }
                )
        elif isinstance(item, ToolResultMessage):
            kind = "custom_tool_call_output" if custom and item.call_id in custom else "function_call_output"
            wire.append({"type": kind, "call_id": item.call_id, "output": item.text})
        else:
            raise TypeError(
                f"cannot send {type(item).__name__} as a Responses input item; use an agentflow message "
                "or a raw item mapping"
            )
    return wire


def text_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """Chat's ``response_format`` as Responses' ``text.format`` (``json_schema`` is flattened)."""
    fmt = dict(response_format)
    if fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), Mapping):
        inner = fmt.pop("json_schema")
        fmt.update(inner)
    return fmt


def request_from_chat(request: ChatRequest, overrides: ChatParameters | None = None) -> ResponsesRequest:
    """The ``ResponsesRequest`` for a unified ``ChatRequest`` (with ``overrides`` applied to its parameters).

    ``max_completion_tokens`` (else ``max_tokens``) → ``max_output_tokens``; ``reasoning_effort`` →
    ``reasoning.effort``; ``response_format`` → ``text.format``; ``custom`` → ``extra_body``. ``tool_choice``
    and ``parallel_tool_calls`` are sent only with tools (standard ones or a custom ``tools`` field), as on
    Chat Completions: OpenAI rejects them without. ``stop`` and ``seed`` have no Responses equivalent and
    raise ``ValueError`` rather than being dropped.
    """
    params = request.parameters if overrides is None else request.parameters.merged(overrides)
    if params.stop:
        raise ValueError("the Responses API has no stop sequences; remove 'stop' or use OpenAIChatModel")
    if params.seed is not None:
        raise ValueError("the Responses API has no seed; remove 'seed' or use OpenAIChatModel")
    max_tokens = (
        params.max_completion_tokens if params.max_completion_tokens is not None else params.max_tokens
    )
    tools = has_tools(params)
    return ResponsesRequest(
        request.messages,
        model=params.model,
        tools=params.tools,
        tool_choice=params.tool_choice if tools else None,
        parallel_tool_calls=params.parallel_tool_calls if tools else None,
        temperature=params.temperature,
        top_p=params.top_p,
        max_output_tokens=max_tokens,
        reasoning=None if params.reasoning_effort is None else {"effort": params.reasoning_effort},
        user=params.user,
        text=None if params.response_format is None else {"format": text_format(params.response_format)},
        extra_body=dict(params.custom),
    )


# --- response ---------------------------------------------------------------------------------------------


def decode_usage(usage: Any) -> TokenUsage | None:
    """``TokenUsage`` from a Responses ``usage`` object; ``None`` when the server sent none (or no object).

    Counts are read as on Chat Completions (``chat_codec.usage_count``): integers, integral floats (``3.0``)
    and decimal strings (``"3"``) count; anything else (``15.5``, ``"three"``) and missing sub-fields count
    as 0, so a complete answer is never thrown away over its usage; a missing total is input + output.

    >>> usage = decode_usage({"input_tokens": 10, "output_tokens": 5,
    ...                       "input_tokens_details": {"cached_tokens": 4}})
    >>> (usage.total_tokens, usage.cached_input_tokens, usage.uncached_input_tokens)
    (15, 4, 6)
    """
    if not isinstance(usage, Mapping):
        return None
    input_tokens = usage_count(usage.get("input_tokens"))
    output_tokens = usage_count(usage.get("output_tokens"))
    total = usage.get("total_tokens")
    in_details = usage.get("input_tokens_details")
    out_details = usage.get("output_tokens_details")
    in_details = in_details if isinstance(in_details, Mapping) else {}
    out_details = out_details if isinstance(out_details, Mapping) else {}
    return TokenUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens if total is None else usage_count(total),
        cached_input_tokens=usage_count(in_details.get("cached_tokens")),
        cache_write_tokens=usage_count(in_details.get("cache_write_tokens")),
        reasoning_tokens=usage_count(out_details.get("reasoning_tokens")),
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


CALL_ITEMS = frozenset({"function_call", "custom_tool_call"})
"""Output item types that are tool calls (``ResponsesResponse.tool_calls``): function calls, and GPT-5's
custom (free-form) tool calls."""


def tool_call_from_item(item: Mapping[str, Any]) -> ToolCall:
    """The ``ToolCall`` of a ``function_call`` item, or of a ``custom_tool_call`` item (kind ``"custom"``, its
    ``input`` as the arguments); ``ProtocolError`` without a name or call id (the item's ``id`` stands in for
    a missing ``call_id``).

    Arguments stay the raw JSON text (an object sent by a lenient server is serialised, never reformatted).
    """
    kind = item.get("type")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ProtocolError(f"{kind} item without a name: {item.get('id')!r}")
    call_id = item.get("call_id") or item.get("id")
    if not isinstance(call_id, str):
        raise ProtocolError(f"{kind} item {name!r} without a call_id")
    if kind == "custom_tool_call":
        text = item.get("input")
        return ToolCall(call_id, name, text if isinstance(text, str) else "", "custom")
    arguments = item.get("arguments")
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        # Some compatible servers send the arguments object itself; keep it as JSON text.
        arguments = orjson.dumps(arguments).decode()
    return ToolCall(call_id, name, arguments)


MESSAGE_BREAK = "\n\n"
"""What ``output_text`` puts between the texts of two messages (the parts of one message are joined as they
are); a stream sends it as a ``TextDelta`` of its own."""

UNFINISHED_STATUSES = frozenset({"in_progress", "incomplete"})
"""Item statuses of calls the model did not finish (their arguments may be truncated)."""

PENDING_STATUSES = frozenset({"queued", "in_progress"})
"""Response statuses of a response that has no answer yet (a ``background`` response)."""


def build_response(envelope: Mapping[str, Any], output: Iterable[Any]) -> ResponsesResponse:
    """A ``ResponsesResponse`` from a response envelope and its output items, deriving every view.

    Used for blocking bodies and for stream results (whose items may come from the events seen).
    ``output_text`` joins the ``output_text`` parts of each message as they are, and the texts of separate
    messages with a blank line (``MESSAGE_BREAK``).
    """
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    refusals: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for item in output:
        if not isinstance(item, dict):
            raise ProtocolError(f"output item is not an object: {item!r}")
        items.append(item)
        kind = item.get("type")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, list):
                message: list[str] = []
                for part in content:
                    if not isinstance(part, Mapping):
                        continue
                    part_type = part.get("type")
                    if part_type == "output_text":
                        message.append(_str(part.get("text")) or "")
                    elif part_type == "refusal":
                        refusals.append(_str(part.get("refusal")) or "")
                joined = "".join(message)
                if joined:
                    texts.append(joined)
        elif kind == "function_call" or kind == "custom_tool_call":
            # A call the model did not finish (a cut-off stream, max_output_tokens) stays in ``output`` but is
            # not offered as a tool call: its arguments may be truncated.
            if item.get("status") not in UNFINISHED_STATUSES:
                calls.append(tool_call_from_item(item))
        elif kind == "reasoning":
            for key in ("summary", "content"):
                parts = item.get(key)
                if isinstance(parts, list):
                    for part in parts:
                        text = _str(part.get("text")) if isinstance(part, Mapping) else None
                        if text:
                            reasoning.append(text)
    incomplete = envelope.get("incomplete_details")
    error = envelope.get("error")
    return ResponsesResponse(
        id=_str(envelope.get("id")),
        model=_str(envelope.get("model")),
        status=_str(envelope.get("status")),
        output=tuple(items),
        # Separate messages (a gpt-5 "commentary" preamble, then the answer) would run together otherwise.
        output_text=MESSAGE_BREAK.join(texts),
        refusal="".join(refusals) if refusals else None,
        reasoning="\n\n".join(reasoning) if reasoning else None,
        tool_calls=tuple(calls),
        usage=decode_usage(envelope.get("usage")),
        incomplete_details=incomplete if isinstance(incomplete, Mapping) and incomplete else None,
        error=error if isinstance(error, Mapping) and error else None,
        raw=envelope,
    )


def decode_response(payload: Any) -> ResponsesResponse:
    """A ``ResponsesResponse`` from a decoded ``/responses`` body; ``ProtocolError`` when it is not one.

    Does not judge the status: ``check_response`` turns ``failed`` / ``incomplete`` into typed errors.
    """
    if not isinstance(payload, dict):
        raise ProtocolError(f"expected a response object, got {type(payload).__name__}")
    output = payload.get("output")
    if output is None:
        if payload.get("error") is None and payload.get("status") != "failed":
            raise ProtocolError("response object without an 'output' list")
        output = []
    if not isinstance(output, list):
        raise ProtocolError(f"response 'output' is not a list: {type(output).__name__}")
    return build_response(payload, output)


def check_response(
    response: ResponsesResponse, *, on_incomplete: IncompletePolicy = "raise", partial: Any = None
) -> ResponsesResponse:
    """``response`` itself when it succeeded; otherwise the typed error.

    ``failed`` or an ``error`` object → the ``ModelError`` subclass for its code (``insufficient_quota`` →
    non-retryable ``RateLimitError``…); ``cancelled`` → ``ModelError``; ``queued`` / ``in_progress`` (a
    ``background`` response, which has no answer yet) → ``ResponseNotFinishedError``; ``incomplete`` →
    ``IncompleteResponseError`` (``reason`` from ``incomplete_details``) unless ``on_incomplete="return"``.
    ``partial`` is what the error carries (default: the response itself).
    """
    status = response.status
    if response.error is not None or status == "failed":
        raise error_from_payload(response.error or {}, default_message=f"response {response.id} failed")
    if status == "cancelled":
        raise ModelError(f"response {response.id} was cancelled")
    if status in PENDING_STATUSES:
        # Never an empty success: the answer does not exist yet (``background: true``, or a server that
        # answered before finishing). Sending again would start another response, so it is not retryable.
        raise ResponseNotFinishedError(
            f"response {response.id} is {status}, not finished: background responses are not supported by "
            f"this call; drop 'background' from the request, or poll GET /responses/{response.id} yourself",
            response_id=response.id,
            response_status=status,
            partial=response if partial is None else partial,
        )
    if status == "incomplete" and on_incomplete == "raise":
        reason = response.incomplete_reason
        raise IncompleteResponseError(
            f"response incomplete: {reason or 'no reason given'}",
            reason=reason,
            partial=response if partial is None else partial,
        )
    return response


def error_from_event(payload: Mapping[str, Any]) -> ModelError:
    """The typed error of an ``error`` stream event, nested (``{"error": {…}}``) or flat (``{"code", …}``)."""
    inner = payload.get("error")
    if isinstance(inner, Mapping):
        return error_from_payload(inner, default_message="error event in the response stream")
    # The flat shape's own "type" is the event type ("error"), not an error type.
    flat = {key: value for key, value in payload.items() if key not in ("type", "sequence_number")}
    return error_from_payload(flat, default_message="error event in the response stream")
