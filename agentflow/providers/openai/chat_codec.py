"""The Chat Completions codec: ``ChatRequest`` → wire dict, wire dict → ``ChatResponse`` (seed 003 §3).

Pure functions: no I/O, no awaits, nothing about HTTP. The stream decoder (``chat_stream``) reuses the
usage and finish-reason mappings from here.

Request body order (seed 003 §3.3): custom parameters first, then ``model`` and ``messages``, the
sampling fields, ``tools`` / ``tool_choice``, and for streams ``stream`` / ``stream_options`` — so a
standard field always wins over a custom one of the same name. Unset (``None``) fields are not sent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import orjson

from ...model.errors import ProtocolError, error_from_payload, is_error_payload
from ...model.messages import (
    REASONING_FIELDS,
    AiMessage,
    DeveloperMessage,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolCallKind,
    ToolResultMessage,
    UserMessage,
)
from ...model.request import ChatParameters, ChatRequest
from ...model.response import ChatResponse, FinishReason, TokenUsage
from ...model.tools import ToolChoice, ToolSpec
from .think_tags import DEFAULT_THINK_TAGS, ThinkTags, split_think_block

__all__ = [
    "MAX_TOKENS_FIELDS",
    "MaxTokensField",
    "content_pieces",
    "decode_chat_response",
    "decode_finish_reason",
    "decode_usage",
    "encode_chat_body",
    "encode_chat_request",
    "encode_message",
    "encode_parameters",
    "encode_tool",
    "encode_tool_choice",
    "has_tools",
    "inline_reasoning_field",
    "synthetic_call_id_prefix",
    "usage_count",
]

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_EXECUTION,
    "function_call": FinishReason.TOOL_EXECUTION,
    "tool_call": FinishReason.TOOL_EXECUTION,  # the singular, from some compatible servers
    "content_filter": FinishReason.CONTENT_FILTER,
    "sensitive": FinishReason.CONTENT_FILTER,  # Zhipu (GLM): the answer was blocked by its safety review
}

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
#: The wire fields that may carry the output token limit (``max_tokens_field``).
MAX_TOKENS_FIELDS: tuple[MaxTokensField, ...] = ("max_tokens", "max_completion_tokens")

# Plain scalar parameters: (ChatParameters attribute, wire field).
_SCALARS = (
    ("temperature", "temperature"),
    ("max_tokens", "max_tokens"),
    ("max_completion_tokens", "max_completion_tokens"),
    ("top_p", "top_p"),
    ("reasoning_effort", "reasoning_effort"),
    ("seed", "seed"),
    ("user", "user"),
)


# --- request -------------------------------------------------------------------------------------


def encode_message(message: Message) -> dict[str, Any]:
    """One unified message as a Chat Completions message object.

    An assistant message's reasoning goes back under its ``reasoning_field`` (the field the server sent it
    in), and not at all when that is ``None``. Empty reasoning is not sent, with one exception: a turn with
    tool calls whose field is ``reasoning_content`` sends it as ``""`` (DeepSeek's thinking mode answers 400
    "Missing reasoning_content field" without it, also when the turn thought nothing).

    Provider fields (``AiMessage.provider_fields``, ``ToolCall.provider_fields``: OpenRouter's
    ``reasoning_details``, Gemini's ``extra_content``) go back verbatim on the message or call they came
    with, never over a standard field; a message without them is sent exactly as before. A ``custom`` call
    goes back as ``{"id", "type": "custom", "custom": {"name", "input"}}``.

    >>> encode_message(AiMessage(tool_calls=[ToolCall("call_1", "getWeather", '{"city":"hangzhou"}')]))
    ... # doctest: +NORMALIZE_WHITESPACE
    {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'call_1', 'type': 'function',
     'function': {'name': 'getWeather', 'arguments': '{"city":"hangzhou"}'}}]}
    >>> encode_message(AiMessage("4", reasoning="2+2", reasoning_field="reasoning_content"))
    {'role': 'assistant', 'content': '4', 'reasoning_content': '2+2'}
    >>> encode_message(AiMessage("4", reasoning_field="reasoning_content"))
    {'role': 'assistant', 'content': '4'}
    """
    if isinstance(message, UserMessage):
        content = message.content
        # Plain text, the usual case, needs no ``_user_content`` call.
        out: dict[str, Any] = {
            "role": "user",
            "content": content if isinstance(content, str) else _user_content(content),
        }
        if message.name is not None:
            out["name"] = message.name
        return out
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.text}
    if isinstance(message, DeveloperMessage):
        return {"role": "developer", "content": message.text}
    if isinstance(message, AiMessage):
        return _assistant(message)
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.text}
    raise TypeError(
        f"cannot send a {type(message).__name__} to Chat Completions; expected SystemMessage, "
        "DeveloperMessage, UserMessage, AiMessage or ToolResultMessage"
    )


def _user_content(content: str | tuple[TextPart | ImagePart, ...]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            image: dict[str, Any] = {"url": part.url}
            if part.detail is not None:
                image["detail"] = part.detail
            parts.append({"type": "image_url", "image_url": image})
        else:
            raise TypeError(
                f"unsupported user content part {type(part).__name__}; expected TextPart or ImagePart"
            )
    return parts


def _assistant(message: AiMessage) -> dict[str, Any]:
    content: str | None = message.text
    if content is None and not message.tool_calls and message.refusal is None:
        content = ""
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if message.refusal is not None:
        out["refusal"] = message.refusal
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            if c.kind == "function" and c.provider_fields is None  # the usual call: nothing else to write
            else _tool_call(c)
            for c in message.tool_calls
        ]
    field = message.reasoning_field
    if field is not None:
        # Back under the name the server used, and only to a server that sent it: DeepSeek's thinking mode
        # answers 400 without it, OpenAI (which never sends one) rejects unknown fields.
        if field not in REASONING_FIELDS:  # never write reasoning over some other key (``content``…)
            raise ValueError(
                f"AiMessage.reasoning_field must be one of {', '.join(map(repr, REASONING_FIELDS))} or None, "
                f"got {field!r}"
            )
        reasoning = message.reasoning
        if reasoning:
            out[field] = reasoning
        elif message.tool_calls and field == "reasoning_content":
            # DeepSeek wants the field on every tool-call turn of its thinking mode, even empty (pydantic-ai
            # sends it so, and DeepSeek's recorded answer to that request is a 200). Elsewhere an empty field
            # says nothing, and strict servers refuse it (Groq: "reasoning is not supported with this model").
            out[field] = ""
    extra = message.provider_fields
    if extra:
        # Back exactly as the server sent them (OpenRouter's ``reasoning_details``), and only to a server that
        # sent them; never over a standard field.
        for key, value in extra.items():
            out.setdefault(key, value)
    return out


def _tool_call(call: ToolCall) -> dict[str, Any]:
    """A tool call of an assistant message that is custom or carries provider fields (off the usual path)."""
    out: dict[str, Any] = (
        {"id": call.id, "type": "custom", "custom": {"name": call.name, "input": call.arguments}}
        if call.kind == "custom"
        else {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    )
    if call.provider_fields:
        # Gemini's ``extra_content`` (its thought signature) goes back on the call it came with.
        for key, value in call.provider_fields.items():
            out.setdefault(key, value)
    return out


def _one_token_limit(fields: dict[str, Any], field: MaxTokensField) -> None:
    """``fields`` with at most one token limit, under ``field``."""
    if field not in MAX_TOKENS_FIELDS:  # never write the limit over some other key
        raise ValueError(f"max_tokens_field must be one of {', '.join(map(repr, MAX_TOKENS_FIELDS))} or None")
    limits = [
        v
        for v in (fields.pop("max_tokens", None), fields.pop("max_completion_tokens", None))
        if v is not None
    ]
    if limits:
        fields[field] = min(limits)


def encode_tool(tool: ToolSpec) -> dict[str, Any]:
    """``{"type": "function", "function": {name, description, parameters[, strict]}}``.

    >>> encode_tool(ToolSpec("f", "does f", {"type": "object"}, strict=True))["function"]["strict"]
    True
    """
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def encode_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    """``"auto"``, ``"none"``, ``"required"``, or ``{"type": "function", "function": {"name": …}}``.

    >>> encode_tool_choice(ToolChoice.function("f"))
    {'type': 'function', 'function': {'name': 'f'}}
    """
    if choice.mode == "function":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def encode_chat_request(
    request: ChatRequest,
    *,
    stream: bool = False,
    stream_usage: bool = True,
    max_tokens_field: MaxTokensField | None = None,
) -> dict[str, Any]:
    """The request body for ``POST /chat/completions``.

    Raises ``ValueError`` when no model name is set (seed 003: it fails locally, before any request).
    ``stream_usage`` and ``max_tokens_field`` are the model options of those names (see
    ``encode_chat_body`` and ``encode_parameters``).

    >>> from agentflow import UserMessage
    >>> params = ChatParameters(model="m", custom={"model": "x", "n": 1})
    >>> encode_chat_request(ChatRequest([UserMessage("hi")], params))
    {'model': 'm', 'n': 1, 'messages': [{'role': 'user', 'content': 'hi'}]}
    """
    return encode_chat_body(
        request.messages,
        request.parameters,
        stream=stream,
        stream_usage=stream_usage,
        max_tokens_field=max_tokens_field,
    )


def encode_chat_body(
    messages: Iterable[Message],
    params: ChatParameters,
    *,
    stream: bool = False,
    parameters: Mapping[str, Any] | None = None,
    stream_usage: bool = True,
    max_tokens_field: MaxTokensField | None = None,
) -> dict[str, Any]:
    """``encode_chat_request`` of ``ChatRequest(messages, params)``, without building that request (a
    model encodes the messages and parameters it has merged, once per call). ``parameters`` is
    ``encode_parameters(params, max_tokens_field=max_tokens_field)`` when the caller has it already (a
    model keeps the encoding of parameters it sends again); computed here otherwise.

    A stream asks for its usage (``stream_options.include_usage``, added to a custom ``stream_options``)
    unless ``stream_usage`` is false; a custom ``stream_options`` of ``None`` sends none at all. Some
    servers reject the field (Mistral, Databricks, Bedrock, older Azure API versions).

    >>> from agentflow import UserMessage
    >>> body = encode_chat_body([UserMessage("hi")], ChatParameters(model="m"), stream=True)
    >>> body["stream"], body["stream_options"]
    (True, {'include_usage': True})
    >>> "stream_options" in encode_chat_body([], ChatParameters(model="m"), stream=True, stream_usage=False)
    False
    """
    if not params.model:
        raise ValueError(
            "no model name: pass model=… to OpenAIChatModel, or set ChatParameters.model on the request"
        )
    custom = params.custom
    body: dict[str, Any] = dict(custom)
    body["model"] = params.model
    body["messages"] = [encode_message(m) for m in messages]
    body.update(
        encode_parameters(params, max_tokens_field=max_tokens_field) if parameters is None else parameters
    )
    if stream:
        body["stream"] = True
        options = body.get("stream_options")
        if options is None:
            if "stream_options" in body:
                # An explicit ``None`` means "do not send": the way to reach a server that rejects the
                # field without changing the model.
                del body["stream_options"]
            elif stream_usage:
                body["stream_options"] = {"include_usage": True}
        elif stream_usage:
            body["stream_options"] = {
                **(options if isinstance(options, Mapping) else {}),
                "include_usage": True,
            }
    elif custom:
        # A blocking call reads one JSON body: a custom ``stream: true`` would make it unreadable, and OpenAI
        # rejects ``stream_options`` without a stream.
        if "stream" in body:
            body["stream"] = False
        body.pop("stream_options", None)
    return body


def encode_parameters(
    params: ChatParameters, *, max_tokens_field: MaxTokensField | None = None
) -> dict[str, Any]:
    """The body fields of ``params`` other than ``model`` and ``custom``, in body order: what
    ``encode_chat_request`` writes after the messages (a function of ``params`` and ``max_tokens_field``).

    ``max_tokens_field`` names the one wire field that carries the output token limit (``"max_tokens"``,
    which Ollama, LM Studio, llama-cpp-python and older vLLM read, or ``"max_completion_tokens"``); with both
    ``max_tokens`` and ``max_completion_tokens`` set, the smaller (both are upper bounds) is sent. ``None``
    sends each under its own name.

    >>> encode_parameters(ChatParameters(model="m", temperature=0.2, stop="END"))
    {'temperature': 0.2, 'stop': ['END']}
    >>> encode_parameters(ChatParameters(max_completion_tokens=64), max_tokens_field="max_tokens")
    {'max_tokens': 64}
    """
    fields: dict[str, Any] = {}
    for attribute, field in _SCALARS:
        value = getattr(params, attribute)
        if value is not None:
            fields[field] = value
    if max_tokens_field is not None:
        _one_token_limit(fields, max_tokens_field)
    if params.stop:  # seed 003: only sent when non-empty
        fields["stop"] = list(params.stop)
    if params.response_format is not None:
        fields["response_format"] = dict(params.response_format)
    if params.tools:
        fields["tools"] = [encode_tool(t) for t in params.tools]
    # OpenAI rejects tool_choice and parallel_tool_calls without tools ("only allowed when 'tools' are
    # specified"), so they are only sent alongside them (the standard ones, or a custom ``tools`` field).
    if (params.tool_choice is not None or params.parallel_tool_calls is not None) and has_tools(params):
        if params.tool_choice is not None:
            fields["tool_choice"] = encode_tool_choice(params.tool_choice)
        if params.parallel_tool_calls is not None:
            fields["parallel_tool_calls"] = params.parallel_tool_calls
    return fields


def has_tools(params: ChatParameters) -> bool:
    """Whether ``params`` send tools (standard ones, or a custom ``tools`` field): ``tool_choice`` and
    ``parallel_tool_calls`` are sent only then, on both protocols (OpenAI rejects them without tools).

    >>> has_tools(ChatParameters(custom={"tools": [{"type": "web_search"}]})), has_tools(ChatParameters())
    (True, False)
    """
    return bool(params.tools or params.custom.get("tools"))


# --- response ------------------------------------------------------------------------------------

# JSON objects: orjson always yields a dict, so test it before the (slower) ABC, which still lets a caller
# pass any Mapping.
_OBJECT = (dict, Mapping)
# What an absent ``*_tokens_details`` object reads as (only ever read, never written).
_NO_DETAILS: Mapping[str, Any] = {}


def decode_finish_reason(value: Any) -> FinishReason | None:
    """Seed 003 §3.5: stop, length, tool_calls/function_call, content_filter; other → OTHER; null → None.
    Beyond the seed: ``tool_call`` (singular) is a tool call, Zhipu's ``sensitive`` a content filter.

    >>> decode_finish_reason("function_call"), decode_finish_reason("eos"), decode_finish_reason(None)
    (<FinishReason.TOOL_EXECUTION: 'tool_execution'>, <FinishReason.OTHER: 'other'>, None)
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        return FinishReason.OTHER
    return _FINISH_REASONS.get(value, FinishReason.OTHER)


def usage_count(value: Any) -> int:
    """A token count as both protocols read it: an integer; an integral float (``3.0``) or a decimal string
    (``"3"``), as some gateways re-serialise counts; anything else (``15.5``, ``None``, ``"three"``) is 0,
    so a complete answer never fails over its usage.

    >>> usage_count(3), usage_count(3.0), usage_count("3"), usage_count(15.5), usage_count(None)
    (3, 3, 3, 0, 0)
    """
    if type(value) is int:  # the usual case, tested first (a bool is an int too, but not a count)
        return value
    if type(value) is float and value.is_integer():  # ``3.0``: some gateways re-serialise counts as floats
        return int(value)
    if type(value) is str and value.isascii() and value.isdigit():  # ``"3"``: others as strings
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def decode_usage(usage: Mapping[str, Any]) -> TokenUsage:
    """Token usage from a Chat Completions ``usage`` object. Missing counts are 0 (so are non-integral
    ones), integral floats (``3.0``) and decimal strings (``"3"``) count as integers; a missing total is
    input + output; cached input is ``prompt_tokens_details.cached_tokens`` or DeepSeek's
    ``prompt_cache_hit_tokens``.

    >>> decode_usage({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
    ...     "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 30},
    ...     "completion_tokens_details": {"reasoning_tokens": 7}}).uncached_input_tokens
    40
    """
    get = usage.get
    prompt = get("prompt_tokens_details")
    if prompt is None or not isinstance(prompt, _OBJECT):  # often absent: no ``Mapping`` check then
        prompt = _NO_DETAILS
    completion = get("completion_tokens_details")
    if completion is None or not isinstance(completion, _OBJECT):
        completion = _NO_DETAILS
    # Counts are nearly always plain ints: ``usage_count`` (a call each) only reads the others.
    input_tokens = get("prompt_tokens")
    if type(input_tokens) is not int:
        input_tokens = usage_count(input_tokens)
    output_tokens = get("completion_tokens")
    if type(output_tokens) is not int:
        output_tokens = usage_count(output_tokens)
    total = get("total_tokens")
    if total is None:
        total = input_tokens + output_tokens
    elif type(total) is not int:
        total = usage_count(total)
    cached = prompt.get("cached_tokens")
    if cached is None:
        cached = get("prompt_cache_hit_tokens")
    written = prompt.get("cache_write_tokens")
    reasoning = completion.get("reasoning_tokens")
    # An absent count (``None``) is 0 without the ``usage_count`` call.
    return TokenUsage(
        input_tokens,
        output_tokens,
        total,
        cached if type(cached) is int else 0 if cached is None else usage_count(cached),
        written if type(written) is int else 0 if written is None else usage_count(written),
        reasoning if type(reasoning) is int else 0 if reasoning is None else usage_count(reasoning),
    )


_METADATA_KEYS = ("id", "model", "created")


def decode_metadata(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``id``, ``model`` and ``created`` of a completion (or chunk), those that are present."""
    metadata: dict[str, Any] = {}
    for key in _METADATA_KEYS:
        value = payload.get(key)
        if value is not None:
            metadata[key] = value
    return metadata


def content_pieces(content: Any, where: str) -> list[tuple[bool, str]]:
    """The text of a list of content parts, as ``(is_thinking, text)`` pieces in order.

    Some compatible servers send ``content`` as parts (Mistral's Magistral: ``{"type": "text", "text"}`` and
    ``{"type": "thinking", "thinking": [{"type": "text", "text"}]}``, the latter also as a plain string).
    Text parts are the answer, thinking parts its reasoning; other part types (references…) are skipped.
    Raises ``ProtocolError`` when ``content`` is not a list.

    >>> thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]}
    >>> content_pieces([thinking, {"type": "text", "text": "Hi"}, {"type": "reference"}], "content")
    [(True, 'hm'), (False, 'Hi')]
    """
    if not isinstance(content, list):
        raise ProtocolError(
            f"{where} is neither a string, a list of parts nor null: {type(content).__name__}"
        )
    pieces: list[tuple[bool, str]] = []
    for part in content:
        if not isinstance(part, _OBJECT):
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if isinstance(text, str) and text:
                pieces.append((False, text))
        elif kind == "thinking":
            thinking = part.get("thinking")
            if isinstance(thinking, str):
                thinking = [{"type": "text", "text": thinking}]
            if isinstance(thinking, list):
                pieces.extend((True, text) for _, text in content_pieces(thinking, where))
    return pieces


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    # A few compatible servers send an object; keep its JSON text (tool arguments are always a string).
    return orjson.dumps(value).decode()


def synthetic_call_id_prefix() -> str:
    """The start of the ids one response gives the tool calls its server sent without one: ``call_<random>_``,
    then the call's index. Random per response, so two turns' made-up ids never collide in a conversation
    (memory pairs each call with its result by id)."""
    return f"call_{os.urandom(6).hex()}_"


def _tool_calls(message: Mapping[str, Any]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    raw_calls = message.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        raise ProtocolError("choices[0].message.tool_calls is not a list")
    if raw_calls:
        prefix = None
        for i, raw in enumerate(raw_calls):
            if not isinstance(raw, _OBJECT):
                raise ProtocolError(f"choices[0].message.tool_calls[{i}] has no function name")
            function = raw.get("function")
            kind: ToolCallKind = "function"
            if not isinstance(function, _OBJECT):
                # GPT-5's custom (free-form) tools: ``{"type": "custom", "custom": {"name", "input"}}``.
                function = raw.get("custom")
                if not isinstance(function, _OBJECT) or raw.get("type") != "custom":
                    raise ProtocolError(f"choices[0].message.tool_calls[{i}] has no function name")
                kind = "custom"
                arguments = function.get("input")
            else:
                arguments = function.get("arguments")
            name = function.get("name")
            if not isinstance(name, str):
                raise ProtocolError(f"choices[0].message.tool_calls[{i}] has no {kind} name")
            call_id = raw.get("id")
            if not isinstance(call_id, str) or not call_id:
                prefix = prefix or synthetic_call_id_prefix()
                call_id = f"{prefix}{i}"
            extra = raw.get("extra_content")  # Gemini's thought signature (``CALL_PROVIDER_FIELDS``)
            calls.append(
                ToolCall(
                    call_id,
                    name,
                    arguments if isinstance(arguments, str) else _arguments(arguments),
                    kind,
                    None if extra is None else {"extra_content": extra},
                )
            )
        return calls  # the legacy ``function_call`` counts only when there are no tool calls
    legacy = message.get("function_call")
    if isinstance(legacy, _OBJECT) and isinstance(legacy.get("name"), str):
        calls.append(ToolCall("function_call", legacy["name"], _arguments(legacy.get("arguments"))))
    return calls


def inline_reasoning_field(sent: str | None, *, has_calls: bool) -> str | None:
    """The ``reasoning_field`` of a turn whose reasoning came in its content (a think block, thinking parts),
    when the server sent the field ``sent`` empty (or ``None``: no field at all).

    ``None``, so the reasoning is not sent back: no field carried it. Except on a tool-call turn whose server
    sent ``reasoning_content``: DeepSeek's thinking mode refuses such a turn without the field, so it is
    kept, and the turn's reasoning goes back in it (a tool loop's reasoning is what DeepSeek asks back).

    >>> inline_reasoning_field("reasoning_content", has_calls=False) is None
    True
    >>> inline_reasoning_field("reasoning_content", has_calls=True)
    'reasoning_content'
    """
    return sent if has_calls and sent == "reasoning_content" else None


def decode_chat_response(payload: Any, *, think_tags: ThinkTags | None = DEFAULT_THINK_TAGS) -> ChatResponse:
    """A ``ChatResponse`` from a decoded ``chat.completion`` body (seed 003 §3.4–3.6).

    The answer is the choice whose ``index`` is 0 (the first choice when none is), as in a stream. Raises
    ``ProtocolError`` when ``choices`` is missing or empty or that choice has no ``message``, and the typed
    ``ModelError`` when the body is an error object (also a flat one, or ``detail``).

    Provider fields: the message's ``reasoning_details`` (OpenRouter) and each call's ``extra_content``
    (Gemini) are kept verbatim in ``provider_fields`` (``None`` when absent or empty), for ``encode_message``
    to send back; a ``{"type": "custom", "custom": {"name", "input"}}`` call (GPT-5 custom tools) is a
    ``ToolCall`` of kind ``"custom"`` whose ``arguments`` are its ``input``.

    ``think_tags``: string content that opens with a block in these tags (after optional whitespace) has
    that block split off as the reasoning (``think_tags.split_think_block``); ``None`` leaves it in the
    text, and a block with no answer after it leaves the text ``None`` (as its stream does). A non-empty
    ``reasoning_content`` / ``reasoning`` stays the reasoning (the block repeats it and is only removed from
    the text); inline reasoning names no ``reasoning_field``, so it is not sent back, but a tool-call turn
    keeps a ``reasoning_content`` its server sent empty (``inline_reasoning_field``).

    >>> r = decode_chat_response({"choices": [{"message": {"content": "CAS."}, "finish_reason": "stop"}],
    ...                           "usage": {"prompt_tokens": 20, "completion_tokens": 10}})
    >>> r.message.text, r.finish_reason, r.usage.total_tokens
    ('CAS.', <FinishReason.STOP: 'stop'>, 30)
    """
    if not isinstance(payload, _OBJECT):
        raise ProtocolError(f"expected a JSON object, got {type(payload).__name__}")
    if payload.get("error") is not None:
        raise error_from_payload(payload, body=orjson.dumps(payload).decode())
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        body = orjson.dumps(payload).decode()
        if is_error_payload(payload):
            # An error report answered with 200 in another shape (vLLM's ``{"object": "error", …}``,
            # FastAPI's ``detail``): the server's message, typed, rather than "no choices".
            raise error_from_payload(payload, body=body, default_message="the response has no choices")
        raise ProtocolError("the response has no choices", body=body)
    choice = choices[0]
    if isinstance(choice, _OBJECT) and choice.get("index", 0):
        # ``n > 1`` with the choices out of order: the answer is the choice with index 0, as in a stream (the
        # first one when none has it).
        choice = next((c for c in choices if isinstance(c, _OBJECT) and not c.get("index", 0)), choice)
    message = choice.get("message") if isinstance(choice, _OBJECT) else None
    if not isinstance(message, _OBJECT):
        raise ProtocolError("the response has no choices[0].message", body=orjson.dumps(payload).decode())
    # A plain answer has neither key: skip the tool-call reader (the costliest part) for it.
    has_calls = message.get("tool_calls") is not None or message.get("function_call") is not None
    calls = _tool_calls(message) if has_calls else ()
    text = message.get("content")
    thought = None
    inline = None
    if type(text) is str:
        # Most answers fail the first-character test, without the call (one per model call); an empty open
        # tag (the prompt opened the block) always splits.
        if (
            think_tags is not None
            and text
            and (not think_tags[0] or text[0] == think_tags[0][0] or text[0].isspace())
        ):
            split = split_think_block(text, think_tags)
            if split is not None:
                # No answer after the block is no text, as a stream of it has none.
                text, inline = split[0] or None, split[1]
    elif text is not None:
        pieces = content_pieces(text, "choices[0].message.content")
        text = "".join(piece for thinking, piece in pieces if not thinking)
        thought = "".join(piece for thinking, piece in pieces if thinking)
    if not text and calls:
        text = None
    # ``reasoning_content`` (DeepSeek) unless it is empty and ``reasoning`` (OpenRouter, Groq) is not. The
    # field is noted even when its text is empty: DeepSeek's thinking mode wants ``reasoning_content`` back
    # on a tool-call turn also when it thought nothing on it.
    reasoning = message.get("reasoning_content")
    other = message.get("reasoning")
    reasoning_field: str | None
    if type(reasoning) is str and (reasoning or type(other) is not str or not other):
        reasoning_field = "reasoning_content"
    elif type(other) is str:
        reasoning, reasoning_field = other, "reasoning"
    else:  # the usual case (OpenAI): neither field
        reasoning, reasoning_field = None, None
    if not reasoning and (thought or inline):
        # Thinking content parts (Magistral) or a think block are the reasoning unless the server's own field
        # has some (then the block repeats it). No field carried it, so it is not sent back
        # (``inline_reasoning_field``).
        reasoning = thought or inline
        reasoning_field = inline_reasoning_field(reasoning_field, has_calls=bool(calls))
    refusal = message.get("refusal")
    details = message.get("reasoning_details")  # OpenRouter (``MESSAGE_PROVIDER_FIELDS``); absent elsewhere
    usage = payload.get("usage")
    reason = choice.get("finish_reason")
    finish = _FINISH_REASONS.get(reason) if type(reason) is str else None  # a known reason, the usual case
    if finish is None:
        finish = decode_finish_reason(reason)
    # Positional arguments, in field order: measurably cheaper than keywords for attrs' ``__init__`` (twice
    # per tool loop).
    return ChatResponse(
        AiMessage(  # text, tool_calls, reasoning, refusal, reasoning_field, provider_fields
            text,
            calls,
            reasoning or None,
            refusal if isinstance(refusal, str) else None,
            reasoning_field,
            {"reasoning_details": details} if details else None,
        ),
        decode_usage(usage) if isinstance(usage, _OBJECT) else None,  # usage
        finish,  # finish_reason
        decode_metadata(payload),  # metadata
        payload,  # raw
    )
